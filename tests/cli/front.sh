#!/usr/bin/env bash
# front.sh: the supkit front command.
source "$(dirname "$0")/lib.sh"
run supkit --version
expect_rc 0 "--version exits 0"
expect_out_contains "supkit " "--version prints the version"
run supkit --help
expect_rc 0 "--help exits 0"
expect_out_contains "replay" "--help lists the tools"
expect_out_contains "  sweep " "--help lists sweep"
run supkit nosuchtool
expect_rc 2 "unknown tool exits 2"
expect_one_line_err "unknown tool: one line on stderr"
run supkit
expect_rc 2 "no tool exits 2"
run supkit $'bad\nname'
expect_rc 2 "tool name with a newline refused"
expect_one_line_err "an error quoting a newline stays one line"
finish
