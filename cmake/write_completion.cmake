# Writes OUT, the bash completion script, from PROGRAM (`lockcheck completion bash`). Run by the
# lockcheck_completion target (cmake/package.cmake) after each build of the binary.
execute_process(COMMAND "${PROGRAM}" completion bash OUTPUT_FILE "${OUT}.tmp" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} completion bash: exit ${rc}")
endif()
file(RENAME "${OUT}.tmp" "${OUT}")
