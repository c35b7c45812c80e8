/* Bad input to the maker through the C ABI: every case returns its status
 * with a message, copies nothing it should not, and leaves the maker usable.
 * A counting host api proves "zero bytes copied" and "nothing leaked". */
#include <string.h>

#include "check.h"
#include "counting_api.h"

static lrt_maker_config config(uint64_t w, int policy) {
  lrt_maker_config c;
  lrt_maker_config_init(&c);
  c.task_window = w;
  c.policy = (lrt_upload_policy)policy;
  return c;
}

static int has_message(const char *function) {
  char msg[512];
  lrt_last_error(msg, sizeof msg);
  return strstr(msg, function) != NULL;
}

static void null_arguments(void) {
  counting_ctx ctx;
  lrt_host_api api = counting_api(&ctx);
  lrt_maker_config c = config(16, LRT_UPLOAD_BOUNDED);
  lrt_runtime_maker *m = (lrt_runtime_maker *)0x1; /* must stay untouched */
  CHECK_STATUS(lrt_runtime_maker_create(NULL, &api, &m), LRT_ERR_INVALID_ARGUMENT);
  CHECK(has_message("lrt_runtime_maker_create"));
  CHECK_STATUS(lrt_runtime_maker_create(&c, NULL, &m), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_runtime_maker_create(&c, &api, NULL), LRT_ERR_INVALID_ARGUMENT);
  CHECK(m == (lrt_runtime_maker *)0x1);
  CHECK(ctx.mallocs == 0);

  lrt_sm_header *h = NULL;
  lrt_task_slot slot;
  lrt_upload_report rep;
  int32_t st = 0;
  lrt_sm_segments seg;
  CHECK_STATUS(lrt_runtime_maker_begin_run(NULL, &h), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_runtime_maker_claim_slot(NULL, &slot), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_runtime_maker_upload(NULL, &rep), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_runtime_maker_read_status(NULL, &st), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_runtime_maker_segments(NULL, &seg), LRT_ERR_INVALID_ARGUMENT);
  CHECK(lrt_runtime_maker_device_image(NULL) == NULL);
  lrt_runtime_maker_destroy(NULL);
  lrt_maker_config_init(NULL);
  CHECK(has_message("lrt_maker_config_init"));

  /* NULL outputs on a live maker: rejected, state unchanged. */
  CHECK_STATUS(lrt_runtime_maker_create(&c, &api, &m), LRT_OK);
  CHECK_STATUS(lrt_runtime_maker_begin_run(m, NULL), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_runtime_maker_claim_slot(m, &slot), LRT_ERR_STATE); /* begin_run did not happen */
  CHECK_STATUS(lrt_runtime_maker_begin_run(m, &h), LRT_OK);
  CHECK_STATUS(lrt_runtime_maker_claim_slot(m, NULL), LRT_ERR_INVALID_ARGUMENT);
  CHECK(h->current_task_index == 0);
  CHECK_STATUS(lrt_runtime_maker_segments(m, NULL), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_runtime_maker_upload(m, NULL), LRT_OK); /* report is optional */
  CHECK_STATUS(lrt_runtime_maker_read_status(m, NULL), LRT_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(lrt_runtime_maker_read_status(m, &st), LRT_OK);
  CHECK(st == 0);
  lrt_runtime_maker_destroy(m);
  CHECK(ctx.live == 0);

  /* An incomplete ops table. */
  lrt_host_api_ops ops = counting_ops;
  ops.copy_from_device = NULL;
  lrt_host_api partial = {&ctx, &ops};
  CHECK_STATUS(lrt_runtime_maker_create(&c, &partial, &m), LRT_ERR_INVALID_ARGUMENT);
  lrt_host_api no_ops = {&ctx, NULL};
  CHECK_STATUS(lrt_runtime_maker_create(&c, &no_ops, &m), LRT_ERR_INVALID_ARGUMENT);
}

static void bad_config(void) {
  counting_ctx ctx;
  lrt_host_api api = counting_api(&ctx);
  lrt_runtime_maker *m = NULL;
  const uint64_t windows[] = {3, 5, 6, 1000, 16385, 1u << 19, (uint64_t)1 << 31, UINT64_MAX};
  for (size_t i = 0; i < sizeof windows / sizeof windows[0]; i++) {
    lrt_maker_config c = config(windows[i], LRT_UPLOAD_BOUNDED);
    CHECK_STATUS(lrt_runtime_maker_create(&c, &api, &m), LRT_ERR_INVALID_ARGUMENT);
  }
  lrt_maker_config c = config(16, 4);
  CHECK_STATUS(lrt_runtime_maker_create(&c, &api, &m), LRT_ERR_INVALID_ARGUMENT);
  c = config(16, -1);
  CHECK_STATUS(lrt_runtime_maker_create(&c, &api, &m), LRT_ERR_INVALID_ARGUMENT);
  c = config(16, LRT_UPLOAD_BOUNDED);
  c.flags = 4;
  CHECK_STATUS(lrt_runtime_maker_create(&c, &api, &m), LRT_ERR_INVALID_ARGUMENT);
  CHECK(m == NULL);
  CHECK(ctx.mallocs == 0);

  /* Window 0: the environment, an invalid value there is ignored. */
  c = config(0, LRT_UPLOAD_BOUNDED);
  lrt_sm_segments seg;
  setenv("PTO2_RING_TASK_WINDOW", "64", 1);
  CHECK_STATUS(lrt_runtime_maker_create(&c, &api, &m), LRT_OK);
  CHECK_STATUS(lrt_runtime_maker_segments(m, &seg), LRT_OK);
  CHECK_EQ_U64(seg.end, 320 + 64 * 40 + 64 * 4864 + 64 * 64 + 64);
  lrt_runtime_maker_destroy(m);
  setenv("PTO2_RING_TASK_WINDOW", "not-a-number", 1);
  CHECK_STATUS(lrt_runtime_maker_create(&c, &api, &m), LRT_OK);
  CHECK_STATUS(lrt_runtime_maker_segments(m, &seg), LRT_OK);
  CHECK_EQ_U64(seg.end, 81412416);
  lrt_runtime_maker_destroy(m);
  unsetenv("PTO2_RING_TASK_WINDOW");
  CHECK(ctx.live == 0);

  /* device_malloc returning NULL: LRT_ERR_NO_MEMORY, nothing leaked. */
  counting_ctx fail;
  lrt_host_api fapi = counting_api(&fail);
  fail.fail_malloc = 1;
  for (int p = 0; p <= 2; p++) {
    c = config(1024, p);
    m = NULL;
    CHECK_STATUS(lrt_runtime_maker_create(&c, &fapi, &m), LRT_ERR_NO_MEMORY);
    CHECK(m == NULL);
  }
  CHECK(fail.mallocs == 3 && fail.frees == 0 && fail.live == 0);
}

static void window_and_index(int policy) {
  counting_ctx ctx;
  lrt_host_api api = counting_api(&ctx);
  lrt_maker_config c = config(8, policy);
  lrt_runtime_maker *m = NULL;
  lrt_sm_header *h = NULL;
  lrt_task_slot slot;
  lrt_upload_report rep;
  CHECK_STATUS(lrt_runtime_maker_create(&c, &api, &m), LRT_OK);

  /* Upload before begin_run. */
  CHECK_STATUS(lrt_runtime_maker_upload(m, &rep), LRT_ERR_STATE);
  CHECK(has_message("lrt_runtime_maker_upload"));
  CHECK(ctx.copy_calls == 0);

  CHECK_STATUS(lrt_runtime_maker_begin_run(m, &h), LRT_OK);
  for (int i = 0; i < 8; i++) {
    CHECK_STATUS(lrt_runtime_maker_claim_slot(m, &slot), LRT_OK);
    CHECK(slot.index == i);
  }
  /* Claim past the window. */
  memset(&slot, 0x11, sizeof slot);
  CHECK_STATUS(lrt_runtime_maker_claim_slot(m, &slot), LRT_ERR_OUT_OF_RANGE);
  CHECK(slot.index == 0x11111111);
  CHECK(h->current_task_index == 8);

  /* current_task_index corrupted to -1 or W+1: out of range, zero bytes copied. */
  const int32_t corrupt[] = {-1, 9, INT32_MIN, INT32_MAX};
  for (size_t i = 0; i < 4; i++) {
    h->current_task_index = corrupt[i];
    memset(&rep, 0x22, sizeof rep);
    CHECK_STATUS(lrt_runtime_maker_upload(m, &rep), LRT_ERR_OUT_OF_RANGE);
    CHECK(rep.total_tasks == 0x22222222);
    CHECK_STATUS(lrt_runtime_maker_claim_slot(m, &slot), LRT_ERR_OUT_OF_RANGE);
  }
  CHECK(ctx.copy_calls == 0);
  CHECK(ctx.bytes == 0);
  CHECK(h->current_task_index == INT32_MAX);

  /* A slot pointer overwritten to point outside the mirror: error, nothing copied. */
  h->current_task_index = 8;
  lrt_task_slot_state *states = h->slot_states;
  lrt_task_payload *saved_payload = states[3].payload;
  lrt_task_descriptor *saved_task = states[5].task;
  static lrt_task_payload elsewhere;
  states[3].payload = &elsewhere;
  CHECK(lrt_runtime_maker_upload(m, &rep) != LRT_OK);
  CHECK(has_message("slot 3"));
  CHECK(states[3].payload == &elsewhere); /* rejected upload changed nothing */
  states[3].payload = saved_payload;
  states[5].task = (lrt_task_descriptor *)((char *)h + 16); /* inside the mirror, not a descriptor */
  CHECK(lrt_runtime_maker_upload(m, &rep) != LRT_OK);
  states[5].task = saved_task;
  CHECK(ctx.copy_calls == 0);

  /* All fixed: the same maker uploads. */
  CHECK_STATUS(lrt_runtime_maker_upload(m, &rep), LRT_OK);
  CHECK(rep.total_tasks == 8);
  CHECK(ctx.bytes == rep.bytes && ctx.copies == (int)rep.copies);
  CHECK(h->slot_states[3].payload == saved_payload); /* host pointers restored */
  lrt_runtime_maker_destroy(m);
  CHECK(ctx.live == 0 && ctx.frees == 1);
}

static void failing_copy(int policy, int k) {
  counting_ctx ctx;
  lrt_host_api api = counting_api(&ctx);
  lrt_maker_config c = config(64, policy);
  lrt_runtime_maker *m = NULL;
  lrt_sm_header *h = NULL;
  lrt_task_slot slot;
  lrt_upload_report rep;
  int32_t st = 7;
  CHECK_STATUS(lrt_runtime_maker_create(&c, &api, &m), LRT_OK);
  CHECK_STATUS(lrt_runtime_maker_begin_run(m, &h), LRT_OK);
  for (int i = 0; i < 5; i++) CHECK_STATUS(lrt_runtime_maker_claim_slot(m, &slot), LRT_OK);
  ctx.fail_copy_at = k;
  CHECK_STATUS(lrt_runtime_maker_upload(m, &rep), LRT_ERR_DEVICE);
  CHECK(has_message("copy_to_device"));
  CHECK_STATUS(lrt_runtime_maker_read_status(m, &st), LRT_ERR_STATE);
  CHECK(st == 7);
  /* The next run works. */
  ctx.fail_copy_at = 0;
  counting_reset(&ctx);
  CHECK_STATUS(lrt_runtime_maker_begin_run(m, &h), LRT_OK);
  for (int i = 0; i < 3; i++) {
    CHECK_STATUS(lrt_runtime_maker_claim_slot(m, &slot), LRT_OK);
    slot.payload->scalar_count = 1;
    slot.payload->scalars[0] = 100u + (uint64_t)i;
  }
  CHECK_STATUS(lrt_runtime_maker_upload(m, &rep), LRT_OK);
  CHECK(rep.total_tasks == 3);
  const lrt_sm_header *dev = (const lrt_sm_header *)lrt_runtime_maker_device_image(m);
  CHECK(dev->current_task_index == 3);
  for (int i = 0; i < 3; i++) CHECK_EQ_U64(dev->task_payloads[i].scalars[0], 100u + (uint64_t)i);
  CHECK_STATUS(lrt_runtime_maker_read_status(m, &st), LRT_OK);
  CHECK(st == 0);
  lrt_runtime_maker_destroy(m);
  CHECK(ctx.live == 0);
}

int main(void) {
  null_arguments();
  bad_config();
  for (int p = 0; p <= 2; p++) window_and_index(p);
  failing_copy(LRT_UPLOAD_FULL, 1);
  failing_copy(LRT_UPLOAD_COMPACT, 1);
  for (int k = 1; k <= 4; k++) failing_copy(LRT_UPLOAD_BOUNDED, k);
  return check_result();
}
