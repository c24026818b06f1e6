// Package followertest is the contract suite every follower.Sink passes,
// driven through the calls its package offers (Subject): catching up,
// following, passing over an undecodable record, a follower process killed
// between commits whose checkpoint never runs ahead of its data, and
// rebuilds beside the sink while it follows. The logs are real (an
// embedded NATS server per case), and so are the sinks: the read models'
// bbolt file and the search index's bleve directory each run Run in their
// own package's tests.
package followertest
