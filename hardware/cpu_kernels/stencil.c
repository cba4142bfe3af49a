/* Iterative 2D Gauss-Seidel 5-point stencil with OpenMP tasks (S10 taskiter's scenario): `stencil N BLOCK ITERS REPS`
   sweeps an N x N grid ITERS times; one task per BLOCK x BLOCK block, created by a single producer, with dependences
   on the block itself (inout) and its four neighbours (in) — the anti-diagonal wavefront.  Prints {"kernel":
   "stencil", "n", "block", "iterations", "threads", "time_s": min over REPS, "serial_s": the same sweeps without tasks,
   "checksum"}. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

static int N, B, NB;
static double *g;

static void block(int bi, int bj) {
    int i0 = 1 + bi * B, j0 = 1 + bj * B;
    int i1 = i0 + B < N - 1 ? i0 + B : N - 1, j1 = j0 + B < N - 1 ? j0 + B : N - 1;
    for (int i = i0; i < i1; i++)
        for (int j = j0; j < j1; j++)
            g[(long)i * N + j] = 0.25 * (g[(long)(i - 1) * N + j] + g[(long)(i + 1) * N + j] + g[(long)i * N + j - 1] +
                                         g[(long)i * N + j + 1]);
}

static void init(void) {
    for (long i = 0; i < (long)N * N; i++) g[i] = 0.0;
    for (int j = 0; j < N; j++) g[j] = 1.0;  /* hot top edge */
}

static double checksum(void) {
    double s = 0;
    for (long i = 0; i < (long)N * N; i++) s += g[i];
    return s;
}

int main(int argc, char **argv) {
    N = argc > 1 ? atoi(argv[1]) : 1026;
    B = argc > 2 ? atoi(argv[2]) : 64;
    int iters = argc > 3 ? atoi(argv[3]) : 10, reps = argc > 4 ? atoi(argv[4]) : 3;
    if (N < 3 || B < 1 || iters < 1) { fprintf(stderr, "need N >= 3, BLOCK >= 1, ITERS >= 1\n"); return 2; }
    NB = (N - 2 + B - 1) / B;
    g = malloc((long)N * N * sizeof(double));
    char *dep = malloc((long)NB * NB);  /* one address per block: the dependence objects */
    if (!g || !dep) { fprintf(stderr, "out of memory\n"); return 2; }
    double best = 1e30, serial = 1e30, cs = 0, cs2 = 0;
    for (int r = 0; r < reps; r++) {
        init();
        double t0 = omp_get_wtime();
        for (int it = 0; it < iters; it++)
            for (int bi = 0; bi < NB; bi++)
                for (int bj = 0; bj < NB; bj++) block(bi, bj);
        double t = omp_get_wtime() - t0;
        if (t < serial) serial = t;
        cs = checksum();
    }
    for (int r = 0; r < reps; r++) {
        init();
        double t0 = omp_get_wtime();
#pragma omp parallel
#pragma omp single
        for (int it = 0; it < iters; it++) {
            for (int bi = 0; bi < NB; bi++)
                for (int bj = 0; bj < NB; bj++) {
                    char *c = &dep[(long)bi * NB + bj];
                    char *up = bi > 0 ? c - NB : c, *dn = bi < NB - 1 ? c + NB : c;
                    char *lf = bj > 0 ? c - 1 : c, *rt = bj < NB - 1 ? c + 1 : c;
#pragma omp task depend(inout: c[0]) depend(in: up[0], dn[0], lf[0], rt[0]) firstprivate(bi, bj)
                    block(bi, bj);
                }
#pragma omp taskwait
        }
        double t = omp_get_wtime() - t0;
        if (t < best) best = t;
        cs2 = checksum();
    }
    printf("{\"kernel\": \"stencil\", \"n\": %d, \"block\": %d, \"iterations\": %d, \"threads\": %d, \"time_s\": %.9g, "
           "\"serial_s\": %.9g, \"tasks\": %ld, \"ok\": %s}\n", N, B, iters, omp_get_max_threads(), best, serial,
           (long)NB * NB * iters, cs == cs2 ? "true" : "false");
    free(g); free(dep);
    return 0;
}
