#ifndef DEPOT_CSYSTEMD_SHIM_H
#define DEPOT_CSYSTEMD_SHIM_H
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>
#include <sys/uio.h>
/* malloc_trim, which Glibc's Swift module leaves out: the daemon gives the
   memory of closed streams back to the system (API/Metrics.swift). */
#include <malloc.h>
#endif
