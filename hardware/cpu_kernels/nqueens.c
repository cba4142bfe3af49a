/* n-queens with OpenMP tasks down to a depth cutoff (BOTS nqueens, bitmask form): `nqueens N CUTOFF REPS` prints
   {"kernel": "nqueens", "n": N, "cutoff": C, "threads": P, "time_s": min over REPS, "serial_s": serial elision,
    "tasks": tasks created, "result": solutions}.  One task per valid placement at depths 1..CUTOFF. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

static long seq(int n, int row, unsigned cols, unsigned d1, unsigned d2) {
    if (row == n) return 1;
    unsigned full = (1u << n) - 1, free = full & ~(cols | d1 | d2);
    long s = 0;
    while (free) {
        unsigned bit = free & -free;
        free ^= bit;
        s += seq(n, row + 1, cols | bit, ((d1 | bit) << 1) & full, (d2 | bit) >> 1);
    }
    return s;
}

static long par(int n, int row, unsigned cols, unsigned d1, unsigned d2, int cutoff) {
    if (row == n) return 1;
    if (row >= cutoff) return seq(n, row, cols, d1, d2);
    unsigned full = (1u << n) - 1, free = full & ~(cols | d1 | d2);
    long part[32];
    int k = 0;
    while (free) {
        unsigned bit = free & -free;
        free ^= bit;
        long *slot = &part[k++];
#pragma omp task firstprivate(slot, bit) shared(part)
        *slot = par(n, row + 1, cols | bit, ((d1 | bit) << 1) & full, (d2 | bit) >> 1, cutoff);
    }
#pragma omp taskwait
    long s = 0;
    for (int i = 0; i < k; i++) s += part[i];
    return s;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 12, cutoff = argc > 2 ? atoi(argv[2]) : 3, reps = argc > 3 ? atoi(argv[3]) : 3;
    if (n < 1 || n > 16) { fprintf(stderr, "n must be 1..16\n"); return 2; }
    double best = 1e30, serial = 1e30;
    long r = 0, r2 = 0;
    for (int i = 0; i < reps; i++) {
        double t0 = omp_get_wtime();
        r = seq(n, 0, 0, 0, 0);
        double t = omp_get_wtime() - t0;
        if (t < serial) serial = t;
    }
    for (int i = 0; i < reps; i++) {
        double t0 = omp_get_wtime();
#pragma omp parallel
#pragma omp single
        r2 = par(n, 0, 0, 0, 0, cutoff);
        double t = omp_get_wtime() - t0;
        if (t < best) best = t;
    }
    printf("{\"kernel\": \"nqueens\", \"n\": %d, \"cutoff\": %d, \"threads\": %d, \"time_s\": %.9g, \"serial_s\": %.9g, "
           "\"result\": %ld, \"ok\": %s}\n", n, cutoff, omp_get_max_threads(), best, serial, r2, r == r2 ? "true" : "false");
    return 0;
}
