#define _GNU_SOURCE
#include "evloop.h"

#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>

int evloop_signals(int with_hup)
{
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	if (with_hup)
		sigaddset(&sigs, SIGHUP);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	return signalfd(-1, &sigs, SFD_CLOEXEC);
}

int evloop_interval_timer(long ms)
{
	int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (fd < 0)
		return -1;
	struct itimerspec its = {.it_interval = {ms / 1000, (ms % 1000) * 1000000L},
				 .it_value = {ms / 1000, (ms % 1000) * 1000000L}};
	if (timerfd_settime(fd, 0, &its, NULL) < 0)
		return -1;
	return fd;
}

int evloop_watch(int ep, int fd, uint32_t tag)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u32 = tag};
	return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

void evloop_realtime(int prio, int cpu)
{
	/* The default 50 us timer slack would show up as added delay on every release. */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	if (cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set) < 0)
			perror("sched_setaffinity");
	}
	if (prio > 0) {
		struct sched_param sp = {.sched_priority = prio};
		if (sched_setscheduler(0, SCHED_FIFO, &sp) < 0)
			perror("sched_setscheduler");
	}
}
