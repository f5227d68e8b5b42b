/* Lets two running processes take turns on the CPU: every W microseconds
 * one is stopped (SIGSTOP) and the other continued (SIGCONT), in the order
 * A B B A A B B A ..., for S seconds; then both are continued. Each turn's
 * start is printed as "<realtime µs> A|B", the end as "<µs> end". With
 * W = 0 both run at once and only the start and end are printed.
 *
 *   gate PID_A PID_B W_US SECS
 *
 * Used by bench/turns.sh. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long long now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return t.tv_sec * 1000000LL + t.tv_nsec / 1000;
}

static void pause_us(long us) {
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: gate PID_A PID_B W_US SECS\n");
        return 2;
    }
    int a = atoi(argv[1]), b = atoi(argv[2]);
    long w = atol(argv[3]);
    long long secs_us = (long long)(atof(argv[4]) * 1e6);
    long long end = now_us() + secs_us;
    if (w == 0) {
        kill(a, SIGCONT);
        kill(b, SIGCONT);
        printf("%lld both\n", now_us());
        pause_us((long)secs_us);
        printf("%lld end\n", now_us());
        return 0;
    }
    for (long turn = 0; now_us() < end; turn++) {
        int first = turn % 4 == 0 || turn % 4 == 3;
        kill(first ? b : a, SIGSTOP);
        kill(first ? a : b, SIGCONT);
        printf("%lld %c\n", now_us(), first ? 'A' : 'B');
        pause_us(w);
    }
    printf("%lld end\n", now_us());
    kill(a, SIGCONT);
    kill(b, SIGCONT);
    return 0;
}
