#include "depot_sqlite.h"
#include <sqlite3.h>

static int memstatus_result = -1;

/* Runs when the program loads, before any thread can touch SQLite:
   sqlite3_config is only safe while SQLite is not initialised and no other
   thread is initialising it, which a lazy call from Swift cannot promise. */
__attribute__((constructor))
static void depot_sqlite_configure(void) {
    memstatus_result = sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

int depot_sqlite_disable_memstatus(void) {
    return memstatus_result;
}
