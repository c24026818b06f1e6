package eventstore

// Owned is owned, for the external tests: the partitions a member holds
// once the group has settled.
func Owned(member string, members []string, partitions int) []int {
	return owned(member, members, partitions)
}

// PartitionOf is partitionOf, for the external tests.
func PartitionOf(subject string, partitions int) int { return partitionOf(subject, partitions) }
