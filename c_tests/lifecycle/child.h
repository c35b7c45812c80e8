/* Runs a scenario in a forked child whose standard error goes to a file,
 * and reports how it ended. The parent creates no leanrt object before
 * forking, so these tests say nothing about fork itself. */
#ifndef LEANRT_LIFECYCLE_CHILD_H
#define LEANRT_LIFECYCLE_CHILD_H
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct child_result {
  int exited;       /* 1: exited normally (then status holds the code) */
  int status;       /* exit code, or the signal that ended it */
  int hung;         /* 1: still running after the limit, killed */
  char err[4096];   /* what it wrote to stderr (truncated) */
} child_result;

/* Runs scenario() in a child; the child's exit is whatever scenario() does
 * (it may return, call exit, or fall off main's end through `ret_main`). */
static inline child_result run_child(int (*scenario)(void), int limit_s) {
  child_result r;
  memset(&r, 0, sizeof r);
  char path[] = "/tmp/leanrt-lifecycle-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) { perror("mkstemp"); exit(2); }
  unlink(path);
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) { perror("fork"); exit(2); }
  if (pid == 0) {
    dup2(fd, 2);
    exit(scenario());
  }
  int st = 0;
  struct timespec nap = {0, 5 * 1000 * 1000};
  for (int i = 0; i < limit_s * 200; i++) {
    pid_t w = waitpid(pid, &st, WNOHANG);
    if (w == pid) break;
    nanosleep(&nap, NULL);
    if (i + 1 == limit_s * 200) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      r.hung = 1;
    }
  }
  r.exited = WIFEXITED(st);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st);
  ssize_t n = pread(fd, r.err, sizeof r.err - 1, 0);
  r.err[n > 0 ? n : 0] = 0;
  close(fd);
  return r;
}
#endif
