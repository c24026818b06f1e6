// Package workspace owns snapshots of an execution's working directory as
// git objects: Snapshot captures the whole work tree (tracked changes,
// staged or not, and untracked files that are not ignored) as a commit under
// a private ref refs/agentjournal/<execution>/<sequence>; Restore gives a
// fork its directory by one of the resource modes keep, snapshot or discard;
// List and Prune enumerate and delete those refs, and RemoveWorktree deletes
// a worktree Restore made.
//
// A snapshot never touches what the user owns in the repository: the index,
// HEAD, branches, the stash and the working files stay byte for byte as they
// were. Snapshot builds its tree in a temporary index file seeded from the
// real one, and writes only objects and its own ref.
//
// Every git invocation of the product lives here, through the git binary
// with a cleaned environment; callers speak of directories, executions,
// sequences and commits.
//
// The package does not write journal records (snapshot.created,
// restore.attempted) and does not decide when a turn ends: the runtime
// calls Snapshot at its turn boundaries and turns ErrNotGit into a snapshot
// or restore outcome of "unsupported".
package workspace
