#include "depot_sqlite.h"
#include <sqlite3.h>

int depot_sqlite_disable_memstatus(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
