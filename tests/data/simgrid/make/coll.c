/* One MPI collective started at the same simulated instant on every rank; rank 0 prints the latest finish (s).
   Usage: coll COLLECTIVE BYTES  (bytes: the full per-rank vector, as tests/data/simgrid/README.md says).
   A first untimed call sets up what SMPI builds on first use (the SMP algorithms' node communicators cost
   collectives of their own); then every rank sleeps until simulated time 1 s and the timed call starts. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int p, rank;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const char *coll = argv[1];
  long n = atol(argv[2]) / 4; /* floats */
  long b = n / p;
  float *in = calloc(n + p, sizeof(float)), *out = calloc(n + p, sizeof(float));
  double t0 = 0;
  for (int timed = 0; timed < 2; timed++) {
    if (timed) {
      double left = 1.0 - MPI_Wtime();
      struct timespec wait = {(time_t)left, (long)((left - (time_t)left) * 1e9)};
      nanosleep(&wait, NULL);
    }
    if (timed) t0 = MPI_Wtime();
    if (!strcmp(coll, "allreduce")) MPI_Allreduce(in, out, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    else if (!strcmp(coll, "allgather")) MPI_Allgather(in, b, MPI_FLOAT, out, b, MPI_FLOAT, MPI_COMM_WORLD);
    else if (!strcmp(coll, "reduce_scatter")) MPI_Reduce_scatter_block(in, out, b, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    else if (!strcmp(coll, "alltoall")) MPI_Alltoall(in, b, MPI_FLOAT, out, b, MPI_FLOAT, MPI_COMM_WORLD);
    else if (!strcmp(coll, "bcast")) MPI_Bcast(in, n, MPI_FLOAT, 0, MPI_COMM_WORLD);
    else if (!strcmp(coll, "reduce")) MPI_Reduce(in, out, n, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
    else { fprintf(stderr, "unknown collective %s\n", coll); MPI_Abort(MPI_COMM_WORLD, 2); }
  }
  double took = MPI_Wtime() - t0, latest = 0;
  MPI_Reduce(&took, &latest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("%.12e\n", latest);
  free(in); free(out);
  MPI_Finalize();
  return 0;
}
