/* The event-loop plumbing both emulators share: signals and a stats timer as file descriptors, epoll
 * registration, and the real-time scheduling that keeps the emulators' own latency out of the paths. */
#ifndef WANEMU_EVLOOP_H
#define WANEMU_EVLOOP_H

#include <stdint.h>

/* Blocks SIGTERM and SIGINT (and SIGHUP when `with_hup`) and returns a signalfd that reads them, or -1. */
int evloop_signals(int with_hup);

/* A non-blocking timerfd that fires every `ms` milliseconds, or -1. */
int evloop_interval_timer(long ms);

/* Adds `fd` to epoll `ep` for input, the event carrying `tag`; 0 or -1 as epoll_ctl. */
int evloop_watch(int ep, int fd, uint32_t tag);

/* 1 us timer slack; pinned to `cpu` when >= 0; SCHED_FIFO at `prio` when > 0 (failures are reported,
 * not fatal: the emulator still runs, with more jitter). */
void evloop_realtime(int prio, int cpu);

#endif
