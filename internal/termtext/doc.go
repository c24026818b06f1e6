// Package termtext makes text from journals safe to show on a terminal.
//
// Ids and texts in a journal come from agents and their tools, and human
// output goes to an operator's terminal. A control character there can
// clear the screen, set the window title, write the clipboard (OSC 52),
// move the cursor or forge a line; a bidi control can make a line read
// differently from what it holds. Escape writes those characters as visible
// escapes, for one-line output; EscapeDocument does the same but keeps line
// feeds and tabs, for a document of many lines (a narrative); Strip drops
// them, for rendered text where an escape would only be noise (a
// transcript).
package termtext
