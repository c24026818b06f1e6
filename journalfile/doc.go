// Package journalfile reads and writes journal files and imports them into
// a store. A journal file is one journal as JSONL: one record per line,
// exactly as stored, the journal.header first and sequences 1..n, as
// 'agentjournal journal export' writes it.
//
// It owns the checks a file passes before anything is written (one record
// per line, the header first, one journal, sequences 1..n without gaps,
// unique record ids, ids derived from a natural key that are this
// journal's, every record within the size limit, no blank lines), the
// problems it names by line (*Error), and the import itself: a journal
// already stored with the same records is left alone, one that holds the
// first records of the file gets the rest, and any other is refused
// (*DifferentJournalError) before anything is written. The rest is written
// in one atomic write when the store can (BatchAppender).
//
// It does not own the record schemas and their codec (eventstore), the
// file store layout an export writes (eventstore.FileStore), or where an
// import runs: the CLI imports into the log it opens, the daemon's API
// (POST /v1/journals) into the log it serves, both through Import.
package journalfile
