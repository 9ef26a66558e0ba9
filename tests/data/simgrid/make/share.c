/* Two flows from rank 0 at once, to rank 1 (1 hop) and rank 2 (2 hops) on the ring platform: how CM02 shares link
   0->1. Run as README.md says; rank 1 receives at 1.505024000e-04 s, rank 2 at 2.010032000e-04 s. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int n = 1000000; char *buf = calloc(2 * n, 1);
  MPI_Request r[2];
  if (rank == 0) {
    MPI_Isend(buf, n, MPI_CHAR, 1, 0, MPI_COMM_WORLD, &r[0]);
    MPI_Isend(buf + n, n, MPI_CHAR, 2, 0, MPI_COMM_WORLD, &r[1]);
    MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
  } else if (rank == 1 || rank == 2) {
    MPI_Recv(buf, n, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    printf("rank %d received at %.9e\n", rank, MPI_Wtime());
  }
  MPI_Finalize();
  return 0;
}
