/* `empty_tasks N REPS`: N empty OpenMP tasks created by every thread of the team (each thread creates N/P), the
   min over REPS of seconds per task -> the per-task runtime cost (1 thread) and its contention (all threads). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 200000;
    int reps = argc > 2 ? atoi(argv[2]) : 5;
    double best = 1e30;
    volatile long sink = 0;
    for (int r = 0; r < reps; r++) {
        double t0 = omp_get_wtime();
#pragma omp parallel
        {
            long mine = n / omp_get_num_threads();
            for (long i = 0; i < mine; i++) {
#pragma omp task
                { sink++; }
            }
#pragma omp taskwait
        }
        double t = omp_get_wtime() - t0;
        if (t < best) best = t;
    }
    printf("{\"threads\": %d, \"tasks\": %ld, \"time_s\": %.9g, \"per_task_s\": %.9g}\n", omp_get_max_threads(), n,
           best, best / n);
    return 0;
}
