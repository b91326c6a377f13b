#include "ftprofile.h"
int ftprof_version(void);
int ftprof_version(void) { return FTPROF_VERSION; }
