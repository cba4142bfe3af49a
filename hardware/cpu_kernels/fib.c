/* fib(n) with OpenMP tasks below a grain cutoff (BOTS fib): `fib N CUTOFF REPS` prints
   {"kernel": "fib", "n": N, "cutoff": C, "threads": P, "time_s": min over REPS, "serial_s": serial elision}. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

static long fib_seq(int n) { return n < 2 ? n : fib_seq(n - 1) + fib_seq(n - 2); }

static long fib_task(int n, int cutoff) {
    if (n < cutoff || n < 2) return fib_seq(n);
    long a, b;
#pragma omp task shared(a) firstprivate(n, cutoff)
    a = fib_task(n - 1, cutoff);
#pragma omp task shared(b) firstprivate(n, cutoff)
    b = fib_task(n - 2, cutoff);
#pragma omp taskwait
    return a + b;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 30, cutoff = argc > 2 ? atoi(argv[2]) : 10, reps = argc > 3 ? atoi(argv[3]) : 3;
    double best = 1e30, serial = 1e30;
    long r = 0;
    for (int i = 0; i < reps; i++) {
        double t0 = omp_get_wtime();
        r = fib_seq(n);
        double t = omp_get_wtime() - t0;
        if (t < serial) serial = t;
    }
    for (int i = 0; i < reps; i++) {
        double t0 = omp_get_wtime();
#pragma omp parallel
#pragma omp single
        r = fib_task(n, cutoff);
        double t = omp_get_wtime() - t0;
        if (t < best) best = t;
    }
    printf("{\"kernel\": \"fib\", \"n\": %d, \"cutoff\": %d, \"threads\": %d, \"time_s\": %.9g, \"serial_s\": %.9g, "
           "\"result\": %ld}\n", n, cutoff, omp_get_max_threads(), best, serial, r);
    return 0;
}
