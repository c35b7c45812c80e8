/* fork while another parent thread is inside leanrt's CUDA registry (it
 * creates and releases CUDA apis in a loop, each taking the registry's
 * lock): every child must get its answer at once. A child that took the
 * lock the parent thread held at the fork would hang forever, so each child
 * runs under an alarm and the parent checks how each one ended. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdlib.h>
#include <string.h>

#include "check.h"

static atomic_int stop;
static atomic_long churned;

static void *churn(void *arg) {
  (void)arg;
  while (!atomic_load(&stop)) {
    lrt_host_api api;
    if (lrt_host_api_cuda(0, &api) == LRT_OK) {
      void *p = api.ops->device_malloc(api.ctx, 64);
      if (p) api.ops->device_free(api.ctx, p);
      lrt_host_api_release(&api);
      atomic_fetch_add(&churned, 1);
    }
  }
  return NULL;
}

static int child(lrt_host_api *inherited) {
  alarm(10); /* a hang ends as SIGALRM, which the parent reports */
  lrt_host_api fresh;
  if (lrt_host_api_cuda(0, &fresh) != LRT_ERR_UNAVAILABLE) return 2;
  if (!error_contains("fork")) return 3;
  if (inherited->ops->device_malloc(inherited->ctx, 64) != NULL) return 4;
  lrt_host_api_release(inherited);
  if (inherited->ops != NULL) return 5;
  return 0;
}

int main(void) {
  if (getenv("LEANRT_CUDA_LIBRARY") == NULL) SKIP("LEANRT_CUDA_LIBRARY is not set (run it through ctest)");
  unsetenv("LEANRT_LOG");
  lrt_host_api api;
  CHECK_STATUS(lrt_host_api_cuda(0, &api), LRT_OK);
  pthread_t t;
  CHECK(pthread_create(&t, NULL, churn, NULL) == 0);
  const int forks = getenv("LEANRT_TEST_SMALL") ? 50 : 300;
  int hung = 0, failed = 0;
  for (int i = 0; i < forks; i++) {
    usleep(100); /* let the churn thread get in and out of the lock */
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) _exit(child(&api));
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) hung++;
    else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fprintf(stderr, "child %d ended with status %#x\n", i, status);
      failed++;
    }
  }
  atomic_store(&stop, 1);
  pthread_join(t, NULL);
  printf("%d forks while another thread churned %ld CUDA apis: %d hung, %d failed\n", forks,
         (long)atomic_load(&churned), hung, failed);
  CHECK(hung == 0);
  CHECK(failed == 0);
  CHECK(atomic_load(&churned) > 0);
  lrt_host_api_release(&api);
  return check_result();
}
