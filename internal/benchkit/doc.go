// Package benchkit is the one harness of the five benchmark suites
// (eventstore/storebench, projections/projbench, api/apibench,
// policy/fleetbench, daemon/hostbench) and owns their one report: Report, Result, Check and
// Figure, the text writer (WriteText, one aligned table per suite that
// leaves out the columns no result uses, then the targets with their
// verdicts, what was timed and the notes), the JSON writer and reader
// (WriteJSON, ReadJSON: the host once and a list of suites), the progress
// line (WriteProgress), the settings read off a suite's Config
// (SettingsOf) and the formatting of figures (FormatValue, FormatDuration). It also holds what
// the suites share in measuring: the description of the machine (Host),
// configuration checks (Problems, Default), timing many calls from many
// goroutines (TimeEach), the statistics (Rate, Median, Percentile) and
// settling the disk before a latency measurement.
//
// It does not own any workload, server or figure: each suite measures on
// its own and fills in a Report; the bench command (cmd/agentjournal-bench)
// chooses the suites and prints their reports together. A suite whose Run
// measured everything and then failed to stop what it started may return
// its Report with the error (apibench and projbench do), so that what it
// measured is still printed.
package benchkit
