#ifndef DEPOT_SQLITE_H
#define DEPOT_SQLITE_H

/// SQLite's memory statistics, whose global mutex every allocation takes
/// (SQLITE_CONFIG_MEMSTATUS), are turned off by a constructor that runs when
/// the program loads, before SQLite initialises. This returns what that
/// sqlite3_config call returned: SQLITE_OK, or SQLITE_MISUSE when it came too
/// late. A C shim because sqlite3_config is variadic, which Swift cannot call.
int depot_sqlite_disable_memstatus(void);

#endif
