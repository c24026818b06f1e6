// Package datadir says where agentjournal keeps its data when no --data
// names the directory: the one rule the daemon's binary and the
// benchmarks' share, so that the benchmarks measure the file system the
// daemon writes its log to.
//
// It owns only the default location. It does not create, lock or read the
// directory: bus locks it, and each command makes it when missing.
package datadir
