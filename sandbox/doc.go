// Package sandbox runs an agent process under bubblewrap (bwrap): it turns
// a Policy into bwrap's argument list and checks that bwrap is installed
// and can make a sandbox on this host.
//
// Inside the sandbox the whole file system is read-only (/ bound
// read-only), with a fresh /dev and /proc, a private /tmp, and the agent's
// own process namespace, so it sees no other process of the host (nor
// their environments). The policy's Writable paths (the working directory,
// the agent CLI's state directories) are bound read-write over that; its
// Hidden directories are covered by an empty tmpfs and its Hidden files by
// an empty file, so the daemon's data directory and secrets are not there
// to read. Mounts are made parents first, so a writable directory inside a
// hidden one (a fork's work tree under the data directory) is still
// writable, and a hidden one inside a writable one is still hidden.
// Network is the host's or none (a namespace of its own with loopback
// only).
//
// A host where bwrap is missing or cannot make a sandbox (user namespaces
// turned off) gets an error from Check and Wrap that says why and how to
// fix it: the caller refuses the launch, it never runs the agent
// unsandboxed.
//
// The package does not start processes: the caller runs the program and
// arguments Wrap returns, on pipes or a terminal, as it would the agent's
// own; the process that holds the agent's pipes (the supervisor) stays
// outside the sandbox. Which paths to hide or make writable is the
// caller's to say.
package sandbox
