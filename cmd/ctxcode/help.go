package main

import (
	"embed"
	"strings"
)

// The commands' help texts are plain text files (help/NAME.txt), kept
// apart from the code so that they read, and are edited, as what a user
// sees.
//
//go:embed help/*.txt
var helpFiles embed.FS

// helpText is the help of the command name (help/name.txt).
func helpText(name string) string {
	b, err := helpFiles.ReadFile("help/" + name + ".txt")
	if err != nil {
		panic("ctxcode: no help text for " + name) // a build without its files
	}
	return strings.ReplaceAll(string(b), "\r\n", "\n")
}
