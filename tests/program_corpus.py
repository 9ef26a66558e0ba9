"""The program corpus: mis-ordered and mismatched programs, each with the problems the static checker must name.

Shared by tests/simulator/test_program_corpus.py (the checker and the engine) and tests/verify/test_program_verify.py
(real gloo process groups). Every expected message is derived by hand from the program next to it (who is at which
call, who it waits for), not from the checker's output.
"""

CORPUS = {
    # two groups over the same two ranks, entered in opposite orders
    "cross-group-swap": ("""
        world: 2
        groups: {dp: [0, 1], tp: [0, 1]}
        ranks:
          0: [{op: allreduce, group: dp, size: 1MiB}, {op: allgather, group: tp, size: 1MiB}]
          1: [{op: allgather, group: tp, size: 1MiB}, {op: allreduce, group: dp, size: 1MiB}]
        """, [("deadlock", "rank 0 waits in allreduce#1 (group dp) for rank 1, which waits in allgather#1 (group tp) for rank 0")]),
    # one group, two different ops in opposite orders: the calls meet position by position and disagree
    "same-group-swap": ("""
        world: 2
        groups: {dp: [0, 1]}
        ranks:
          0: [{op: allreduce, group: dp, size: 1MiB}, {op: allgather, group: dp, size: 1MiB}]
          1: [{op: allgather, group: dp, size: 1MiB}, {op: allreduce, group: dp, size: 1MiB}]
        """, [("mismatch", "group dp call #1: rank 0 calls allreduce 1MiB bfloat16 but rank 1 calls allgather 1MiB bfloat16 "
                           "(op differs)"),
              ("mismatch", "group dp call #2: rank 0 calls allgather 1MiB bfloat16 but rank 1 calls allreduce 1MiB bfloat16 "
                           "(op differs)")]),
    "size-mismatch": ("""
        world: 3
        groups: {world: [0, 1, 2]}
        ranks:
          0-1: [{op: allreduce, group: world, size: 64MiB}]
          2: [{op: allreduce, group: world, size: 32MiB}]
        """, [("mismatch", "group world call #1: rank 0 calls allreduce 64MiB bfloat16 but rank 2 calls allreduce 32MiB bfloat16 "
                           "(size differs)")]),
    "dtype-mismatch": ("""
        world: 2
        groups: {dp: [0, 1]}
        ranks:
          0: [{op: reduce_scatter, group: dp, size: 4KiB, dtype: float32}]
          1: [{op: reduce_scatter, group: dp, size: 4KiB}]
        """, [("mismatch", "group dp call #1: rank 0 calls reduce_scatter 4KiB float32 but rank 1 calls reduce_scatter 4KiB "
                           "bfloat16 (dtype differs)")]),
    "root-mismatch": ("""
        world: 4
        groups: {g: [0, 1, 2, 3]}
        ranks:
          0-2: [{op: broadcast, group: g, size: 1KiB, root: 0}]
          3: [{op: broadcast, group: g, size: 1KiB, root: 1}]
        """, [("mismatch", "group g call #1: rank 0 calls broadcast 1KiB bfloat16 root=0 but rank 3 calls broadcast 1KiB "
                           "bfloat16 root=1 (root differs)")]),
    # same shape, different tensors: this one runs to the end and mixes up gradients
    "named-swap": ("""
        world: 2
        groups: {dp: [0, 1]}
        ranks:
          0: [{op: allreduce, group: dp, size: 4KiB, name: grad_a}, {op: allreduce, group: dp, size: 4KiB, name: grad_b}]
          1: [{op: allreduce, group: dp, size: 4KiB, name: grad_b}, {op: allreduce, group: dp, size: 4KiB, name: grad_a}]
        """, [("mismatch", 'group dp call #1: rank 0 calls allreduce 4KiB bfloat16 "grad_a" but rank 1 calls allreduce 4KiB '
                           'bfloat16 "grad_b" (name differs)'),
              ("mismatch", 'group dp call #2: rank 0 calls allreduce 4KiB bfloat16 "grad_b" but rank 1 calls allreduce 4KiB '
                           'bfloat16 "grad_a" (name differs)')]),
    # rank 3 skips the second all-reduce: the others wait for a call that never comes
    "missing-call": ("""
        world: 4
        groups: {world: [0, 1, 2, 3]}
        ranks:
          0-2: [{op: allreduce, group: world, size: 1MiB}, {op: allreduce, group: world, size: 1MiB}]
          3: [{op: allreduce, group: world, size: 1MiB}]
        """, [("missing", "ranks 0, 1, 2 wait in allreduce#2 (group world) for rank 3, which never makes that call "
                          "(it makes 1 call on group world)")]),
    # overlapping pair groups a={0,1}, b={1,2}, c={2,0}, each rank entering its second group first
    "three-rank-ring": ("""
        world: 3
        groups: {a: [0, 1], b: [1, 2], c: [2, 0]}
        ranks:
          0: [{op: allreduce, group: a, size: 1MiB}, {op: allreduce, group: c, size: 1MiB}]
          1: [{op: allreduce, group: b, size: 1MiB}, {op: allreduce, group: a, size: 1MiB}]
          2: [{op: allreduce, group: c, size: 1MiB}, {op: allreduce, group: b, size: 1MiB}]
        """, [("deadlock", "rank 0 waits in allreduce#1 (group a) for rank 1, which waits in allreduce#1 (group b) for rank 2, "
                           "which waits in allreduce#1 (group c) for rank 0")]),
    # 8 ranks, TP groups {0-3}, {4-7} and DP pairs {i, i+4}: ranks 0 and 5 do their DP all-reduce first
    "tp-dp-8-ranks": ("""
        world: 8
        groups: {tp0: [0, 1, 2, 3], tp1: [4, 5, 6, 7], dp0: [0, 4], dp1: [1, 5], dp2: [2, 6], dp3: [3, 7]}
        ranks:
          0: [{op: allreduce, group: dp0, size: 1MiB}, {op: allreduce, group: tp0, size: 2MiB}]
          1: [{op: allreduce, group: tp0, size: 2MiB}, {op: allreduce, group: dp1, size: 1MiB}]
          2: [{op: allreduce, group: tp0, size: 2MiB}, {op: allreduce, group: dp2, size: 1MiB}]
          3: [{op: allreduce, group: tp0, size: 2MiB}, {op: allreduce, group: dp3, size: 1MiB}]
          4: [{op: allreduce, group: tp1, size: 2MiB}, {op: allreduce, group: dp0, size: 1MiB}]
          5: [{op: allreduce, group: dp1, size: 1MiB}, {op: allreduce, group: tp1, size: 2MiB}]
          6: [{op: allreduce, group: tp1, size: 2MiB}, {op: allreduce, group: dp2, size: 1MiB}]
          7: [{op: allreduce, group: tp1, size: 2MiB}, {op: allreduce, group: dp3, size: 1MiB}]
        """, [("deadlock", "rank 0 waits in allreduce#1 (group dp0) for rank 4, which waits in allreduce#1 (group tp1) for rank 5, "
                           "which waits in allreduce#1 (group dp1) for rank 1, which waits in allreduce#1 (group tp0) for rank 0")]),
    # the wait goes through streams and events: rank 1's TP call waits (event f) for its DP call on the comm stream
    "event-between-streams": ("""
        world: 2
        groups: {dp: [0, 1], tp: [0, 1]}
        ranks:
          0:
            - {op: allgather, group: tp, size: 1MiB, stream: main}
            - {op: record, event: e, stream: main}
            - {op: wait, event: e, stream: comm}
            - {op: allreduce, group: dp, size: 1MiB, stream: comm}
          1:
            - {op: allreduce, group: dp, size: 1MiB, stream: comm}
            - {op: record, event: f, stream: comm}
            - {op: wait, event: f, stream: main}
            - {op: allgather, group: tp, size: 1MiB, stream: main}
        """, [("deadlock", "rank 0 waits in allgather#1 (group tp) for rank 1, which waits in allreduce#1 (group dp) for rank 0")]),
    # both ranks send first: NCCL's send blocks until the peer posts the recv
    "send-send": ("""
        world: 2
        ranks:
          0: [{op: send, peer: 1, size: 1MiB}, {op: recv, peer: 1, size: 1MiB}]
          1: [{op: send, peer: 0, size: 1MiB}, {op: recv, peer: 0, size: 1MiB}]
        """, [("deadlock", "rank 0 waits in send#1 to rank 1 for rank 1, which waits in send#1 to rank 0 for rank 0")]),
    "p2p-size-mismatch": ("""
        world: 2
        ranks:
          0: [{op: send, peer: 1, size: 1MiB}]
          1: [{op: recv, peer: 0, size: 2MiB}]
        """, [("mismatch", "rank 0 -> rank 1 message #1: rank 0 calls send 1MiB bfloat16 but rank 1 calls recv 2MiB bfloat16 "
                           "(size differs)")]),
    "unmatched-send": ("""
        world: 2
        ranks:
          0: [{op: send, peer: 1, size: 1MiB}, {op: send, peer: 1, size: 1MiB}]
          1: [{op: recv, peer: 0, size: 1MiB}]
        """, [("missing", "rank 0 waits in send#2 to rank 1 for rank 1, which never makes that call (it makes 1 recv from rank 0)")]),
    # a pipeline's 1F1B on one blocking stream: stage 0 sends its second activation while stage 1 sends the first gradient
    "1f1b-one-stream": ("""
        world: 2
        ranks:
          0: [{op: send, peer: 1, size: 1MiB, name: a0}, {op: send, peer: 1, size: 1MiB, name: a1},
              {op: recv, peer: 1, size: 1MiB, name: g0}, {op: recv, peer: 1, size: 1MiB, name: g1}]
          1: [{op: recv, peer: 0, size: 1MiB, name: a0}, {op: send, peer: 0, size: 1MiB, name: g0},
              {op: recv, peer: 0, size: 1MiB, name: a1}, {op: send, peer: 0, size: 1MiB, name: g1}]
        """, [("deadlock", 'rank 0 waits in send#2 to rank 1 "a1" for rank 1, which waits in send#1 to rank 0 "g0" for rank 0')]),
}
