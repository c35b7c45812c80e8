/* Runs a piece of a test in a forked child whose standard error goes to a
 * temporary file, and reports how the child ended and what it wrote there:
 * the tests that check that leanrt prints nothing, and the fork tests (a
 * child using what it inherited). A child still running after `limit_s`
 * seconds is killed and reported as hung. */
#ifndef LEANRT_CHILD_H
#define LEANRT_CHILD_H
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "leanrt.h"

typedef struct child_result {
  int exited;     /* 1: exited normally (then status holds the code) */
  int status;     /* exit code, or the signal that ended it */
  int hung;       /* 1: still running after the limit, killed */
  char err[4096]; /* what it wrote to stderr (truncated) */
} child_result;

/* Runs fn(ctx) in a child that exits with its return value through exit(),
 * as returning from main does (atexit handlers, thread-local destructors). */
static inline child_result run_child_ctx(int (*fn)(void *), void *ctx, int limit_s) {
  child_result r;
  memset(&r, 0, sizeof r);
  char path[] = "/tmp/leanrt-child-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) {
    perror("mkstemp");
    exit(2);
  }
  unlink(path);
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    perror("fork");
    exit(2);
  }
  if (pid == 0) {
    dup2(fd, 2);
    exit(fn(ctx));
  }
  int st = 0;
  struct timespec nap = {0, 5 * 1000 * 1000};
  for (int i = 0;; i++) {
    if (waitpid(pid, &st, WNOHANG) == pid) break;
    if (i >= limit_s * 200) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      r.hung = 1;
      break;
    }
    nanosleep(&nap, NULL);
  }
  r.exited = WIFEXITED(st);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st);
  ssize_t n = pread(fd, r.err, sizeof r.err - 1, 0);
  r.err[n > 0 ? n : 0] = 0;
  close(fd);
  return r;
}

/* The fork tests' shape: the child gets the parent's maker and host api. */
typedef int (*maker_child_fn)(lrt_runtime_maker *m, lrt_host_api *api);
typedef struct maker_child_ {
  maker_child_fn fn;
  lrt_runtime_maker *m;
  lrt_host_api *api;
} maker_child_;

static inline int maker_child_main_(void *ctx) {
  maker_child_ *c = (maker_child_ *)ctx;
  return c->fn(c->m, c->api);
}

static inline child_result run_child_with_maker(maker_child_fn fn, lrt_runtime_maker *m, lrt_host_api *api,
                                                int limit_s) {
  maker_child_ c = {fn, m, api};
  return run_child_ctx(maker_child_main_, &c, limit_s);
}

/* True when the child exited with 0 and wrote nothing to stderr; says what
 * went wrong otherwise. */
static inline int child_ok_and_silent(const child_result *r) {
  if (r->hung) fprintf(stderr, "the child hung\n");
  else if (!r->exited || r->status != 0)
    fprintf(stderr, "the child ended with %s %d\n", r->exited ? "status" : "signal", r->status);
  if (r->err[0]) fprintf(stderr, "the child wrote to stderr:\n%s\n", r->err);
  return !r->hung && r->exited && r->status == 0 && r->err[0] == 0;
}
#endif
