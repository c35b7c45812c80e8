/* A shared object of a user's own that takes leanrt in from libleanrt.a. */
#include <leanrt.h>

const char *plugin_leanrt_version(void);
const char *plugin_leanrt_version(void) { return lrt_version(); }
