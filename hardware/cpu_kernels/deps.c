/* `deps N REPS`: one producer creates N empty tasks twice — without dependences, then each with five dependences
   (inout on one address, in on four more, all distinct: no task waits) — as the stencil's tasks carry (stencil.c).
   Prints {"threads", "tasks", "plain_per_task_s", "deps_per_task_s", "per_dependence_s": (deps − plain) / 5}, the
   min over REPS: the runtime's cost of registering a dependence (libgomp: a hash-table insert per address). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 100000;
    int reps = argc > 2 ? atoi(argv[2]) : 5;
    char *a = calloc(5 * n, 1);
    volatile long sink = 0;
    if (!a) { fprintf(stderr, "out of memory\n"); return 2; }
    double plain = 1e30, deps = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = omp_get_wtime();
#pragma omp parallel
#pragma omp single
        {
            for (long i = 0; i < n; i++) {
#pragma omp task
                { sink++; }
            }
#pragma omp taskwait
        }
        double t = omp_get_wtime() - t0;
        if (t < plain) plain = t;
        t0 = omp_get_wtime();
#pragma omp parallel
#pragma omp single
        {
            for (long i = 0; i < n; i++) {
                char *c = a + 5 * i;
#pragma omp task depend(inout: c[0]) depend(in: c[1], c[2], c[3], c[4])
                { sink++; }
            }
#pragma omp taskwait
        }
        t = omp_get_wtime() - t0;
        if (t < deps) deps = t;
    }
    printf("{\"threads\": %d, \"tasks\": %ld, \"plain_per_task_s\": %.6g, \"deps_per_task_s\": %.6g, "
           "\"per_dependence_s\": %.6g}\n", omp_get_max_threads(), n, plain / n, deps / n, (deps - plain) / (5.0 * n));
    free(a);
    return 0;
}
