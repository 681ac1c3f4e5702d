#include "sys/signals.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>

#include "sys/process.h"

namespace lockcheck {

namespace {

sigset_t watched() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGUSR1);  // wakes the watcher when the guard goes away
  return set;
}

}  // namespace

InterruptGuard::InterruptGuard() {
  sigset_t set = watched();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  watcher_ = std::thread([this, set] {
    while (true) {
      int sig = 0;
      if (sigwait(&set, &sig) != 0) continue;
      if (done_.load()) return;
      if (sig == SIGUSR1) continue;
      if (signal_.load() == 0) {
        signal_.store(sig);
        flag_.store(true);
        const char msg[] = "\nlockcheck: interrupted; stopping the run and undoing every fault (again to force)\n";
        (void)!::write(2, msg, sizeof msg - 1);
        continue;
      }
      const char msg[] = "\nlockcheck: second interrupt; killing every child process and exiting now\n";
      (void)!::write(2, msg, sizeof msg - 1);
      kill_all_children();
      ::_exit(128 + sig);
    }
  });
}

InterruptGuard::~InterruptGuard() {
  done_.store(true);
  pthread_kill(watcher_.native_handle(), SIGUSR1);
  watcher_.join();
  // A signal that arrives from now on takes its default action again.
  sigset_t set = watched();
  sigdelset(&set, SIGUSR1);
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

}  // namespace lockcheck
