// Package storetest is the contract suite every eventstore.Store
// implementation must pass, and the record builders it uses. A store is
// correct when Run passes against it; the in-process fakes and the real
// stores are held to the same suite.
package storetest
