// Package textclip shortens text for the places that must bound it: error
// messages that quote what a client sent, log lines, recorded reasons and
// summaries, and terminal listings.
//
// Every function marks a cut with Ellipsis and never cuts inside a UTF-8
// sequence. They differ in what they count and what the bound covers:
//
//   - Bytes keeps at most n bytes of the text and adds the ellipsis after
//     them, so the result may be n+3 bytes long. Invalid UTF-8 is kept as
//     it is.
//   - Fit returns at most n bytes in all, the ellipsis included, and valid
//     UTF-8: invalid bytes become U+FFFD first. It is for fields whose
//     size is a hard limit.
//   - Runes counts runes, for text laid out in columns on a terminal: at
//     most n runes in all, the ellipsis included.
//
// Prefix is the cut alone, for a caller that marks it its own way.
//
// The package does not decide the limits; each caller names its own.
package textclip
