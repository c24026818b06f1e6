// Package durable holds the few file operations whose results must survive
// a crash or power loss, written once: syncing a directory so that a file
// created or renamed in it stays, syncing a file by name, and replacing a
// file's contents atomically.
package durable
