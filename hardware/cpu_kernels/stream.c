/* STREAM-like triad a = b + s*c over N doubles with the OpenMP team (first touch by the same threads), and one
   thread's dependent pointer chase over a random cycle of M lines (DRAM latency when M*64 B is far above the L3):
   `stream N REPS M` prints {"threads": P, "triad_bytes_per_s": best over REPS (24 B per element, STREAM's counting),
   "latency_s": seconds per dependent load}.  McCalpin's STREAM counts 24 B per triad iteration (reads b, c; writes a). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 20000000;
    int reps = argc > 2 ? atoi(argv[2]) : 5;
    long m = argc > 3 ? atol(argv[3]) : 4000000;
    double *a = malloc(n * sizeof(double)), *b = malloc(n * sizeof(double)), *c = malloc(n * sizeof(double));
    long *next = malloc(m * 8 * sizeof(long));  /* one pointer per 64 B line */
    if (!a || !b || !c || !next) { fprintf(stderr, "out of memory\n"); return 2; }
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) { a[i] = 0.0; b[i] = 1.0; c[i] = 2.0; }
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = omp_get_wtime();
#pragma omp parallel for schedule(static)
        for (long i = 0; i < n; i++) a[i] = b[i] + 3.0 * c[i];
        double t = omp_get_wtime() - t0;
        if (t < best) best = t;
    }
    /* a random single cycle over m lines (Sattolo's algorithm), then chase it */
    long *perm = malloc(m * sizeof(long));
    unsigned long long s = 88172645463325252ULL;
    for (long i = 0; i < m; i++) perm[i] = i;
    for (long i = m - 1; i > 0; i--) {
        s ^= s << 13; s ^= s >> 7; s ^= s << 17;
        long j = (long)(s % (unsigned long long)i), t = perm[i];
        perm[i] = perm[j]; perm[j] = t;
    }
    for (long i = 0; i < m; i++) next[perm[i] * 8] = perm[(i + 1) % m] * 8;
    long p = 0, steps = m < 2000000 ? 2000000 : m;
    double lat = 1e30;
    for (int r = 0; r < 2; r++) {
        double t0 = omp_get_wtime();
        for (long i = 0; i < steps; i++) p = next[p];
        double t = (omp_get_wtime() - t0) / steps;
        if (t < lat) lat = t;
    }
    printf("{\"threads\": %d, \"elements\": %ld, \"triad_bytes_per_s\": %.6g, \"latency_s\": %.6g, \"sink\": %ld, "
           "\"check\": %g}\n", omp_get_max_threads(), n, 24.0 * n / best, lat, p, a[n / 2]);
    free(a); free(b); free(c); free(next); free(perm);
    return 0;
}
