// Package fleetbench measures whether adding daemons adds policy decision
// throughput: the policy's deciding shared by partitions among 1, 2 and 3
// subscribers on a cluster, against plain appends to the same cluster.
//
// Every round runs on a fresh cluster set up as a daemon fleet would be:
// three embedded NATS servers clustered on loopback in this one process,
// each in a new directory under Config.Dir, with the journal stream at 3
// replicas and every write synced (the daemon's default). A round never
// reuses an earlier round's cluster: a new partitioned group on an old log
// would first decide on the records the earlier rounds left there.
//
//   - raw/append: Config.Writers goroutines append Config.RawAppends
//     progress observations to Config.Journals journals with no policy
//     running, journal j through node j mod 3's store. This is the rate
//     the cluster takes records at, the baseline of the policy rounds.
//   - policy/1-daemon, policy/2-daemons, policy/3-daemons: k policy
//     subscribers, one on each of the first k nodes' stores, share
//     Config.Partitions partitions of the journals. Once the group has
//     settled (every subscriber's Owns heard, the shares covering every
//     partition once, each subscriber holding its even share), the writers
//     append Config.Observations progress observations as raw/append does.
//     The round is timed from the first append to the moment the Decided
//     hooks have heard of a decision on every observation; the rate is
//     decisions per second, also given as a ratio to the 1-daemon rate and
//     to the raw append rate.
//
// By default all three nodes, every subscriber and every writer share this
// process and this machine's CPUs, so a daemon added brings no CPU of its
// own, and the report says so. With Config.DaemonCPU each subscriber runs
// instead as a process of its own (this program again, started with
// MemberCommand), connected to its node over loopback and held to that
// many CPUs by a Linux cpu control group: a daemon added then brings a CPU
// budget of its own, as a daemon on a machine of its own does, and the
// report gives the CPU time the daemons used. It reports what was measured
// and judges nothing.
//
// The package owns the workload, the cluster set-up of each round, the
// member processes and their control groups, and the report. It does not
// own the bus, the store, the policy or the command line: it uses their
// public constructors as the daemon does, and leaves flags and printing to
// its caller.
package fleetbench
