// A fixture for the floors check: harness/ (floor 6) may include core/ (floor 1).
#pragma once
#include "core/op.h"
