/* leanrt writes nothing to the host's stderr unless asked: a warning (here:
 * an invalid PTO2_RING_TASK_WINDOW, ignored) is silent by default, goes to
 * an installed lrt_set_log_callback, or to stderr with LEANRT_LOG=stderr. */
#include "check.h"
#include "child.h"

static char last_message[512];
static int messages;

static void on_log(void *ctx, lrt_log_level level, const char *message) {
  (void)ctx;
  if (level == LRT_LOG_WARNING) {
    snprintf(last_message, sizeof last_message, "%s", message);
    messages++;
  }
}

/* Creates and destroys a maker with the window taken from the environment. */
static int maker_with_env_window(void) {
  lrt_host_api api;
  lrt_maker_config cfg;
  lrt_runtime_maker *m = NULL;
  lrt_maker_config_init(&cfg);
  cfg.task_window = 0;
  if (lrt_host_api_host(&api) != LRT_OK || lrt_runtime_maker_create(&cfg, &api, &m) != LRT_OK) return 1;
  lrt_runtime_maker_destroy(m);
  lrt_host_api_release(&api);
  return 0;
}

static int silent_by_default(void *unused) {
  (void)unused;
  unsetenv("LEANRT_LOG");
  return maker_with_env_window();
}

static int stderr_when_asked(void *unused) {
  (void)unused;
  setenv("LEANRT_LOG", "stderr", 1);
  return maker_with_env_window();
}

static int callback_takes_precedence(void *unused) {
  (void)unused;
  setenv("LEANRT_LOG", "stderr", 1);
  if (lrt_set_log_callback(on_log, NULL) != LRT_OK) return 2;
  int rc = maker_with_env_window();
  if (messages != 1 || strstr(last_message, "PTO2_RING_TASK_WINDOW") == NULL) return 3;
  /* Removing the callback goes back to the environment's choice. */
  if (lrt_set_log_callback(NULL, NULL) != LRT_OK) return 4;
  unsetenv("LEANRT_LOG");
  rc |= maker_with_env_window();
  return messages == 1 ? rc : 5;
}

int main(void) {
  setenv("PTO2_RING_TASK_WINDOW", "12345", 1); /* not a power of two: ignored */
  child_result r = run_child_ctx(silent_by_default, NULL, 60);
  CHECK(r.exited && r.status == 0);
  CHECK(r.err[0] == 0);
  if (r.err[0]) fprintf(stderr, "unexpected stderr: %s\n", r.err);

  r = run_child_ctx(stderr_when_asked, NULL, 60);
  CHECK(r.exited && r.status == 0);
  CHECK(strstr(r.err, "leanrt: warning:") != NULL && strstr(r.err, "PTO2_RING_TASK_WINDOW") != NULL);

  r = run_child_ctx(callback_takes_precedence, NULL, 60);
  CHECK(r.exited && r.status == 0);
  CHECK(r.err[0] == 0);
  if (!(r.exited && r.status == 0)) fprintf(stderr, "callback scenario ended with %d\n", r.status);
  return check_result();
}
