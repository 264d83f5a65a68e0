#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The documents against the code, where a list can be checked: the backends
# (backends/registry, in order, with their names as prose writes them), the count of
# buffer operations (hdal_backend_buffer_ops in include/hdal/backend.h), and
# the files of lib/ in docs/design.md's layer diagram.
# Usage: docs-drift.sh [SRCDIR]
set -u
src=${1:-${top_srcdir:-${srcdir:-.}/..}}
command -v perl >/dev/null || { echo "perl not found"; exit 77; }
exec perl -e '
use strict; use warnings;
my $src = shift;
sub slurp { my $f = "$src/$_[0]"; open(my $h, "<", $f) or die "$f: $!"; local $/; my $t = <$h>; $t }
my (@known, %word);
for (split /\n/, slurp("backends/registry")) {
  s/#.*//;
  next unless /^\s*(\w+)\s*(.*?)\s*$/;
  push @known, $1;
  $word{$1} = $2 if length $2;
}
my ($ops) = slurp("include/hdal/backend.h") =~ /typedef struct \{((?:(?!typedef).)*?)\} hdal_backend_buffer_ops;/s;
my $nops = () = ($ops // "") =~ /\(\*\w+\)\s*\(/g;
my @numbers = qw(zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen
                 sixteen seventeen eighteen nineteen twenty);
my ($fails, $passes) = (0, 0);
sub check { my ($ok, $msg) = @_; if ($ok) { $passes++ } else { print "FAIL: $msg\n"; $fails++ } }
check(@known >= 2, "no backend list in backends/registry");
check($nops >= 2, "no operations table in include/hdal/backend.h");
check(defined $word{$_}, "backend $_: backends/registry gives no name as prose writes it") for @known;
my @files = ("hdal.pc.in", "README.md", glob("$src/docs/*.md"), glob("$src/include/*.h"), glob("$src/include/hdal/*.h"),
             glob("$src/lib/*.[ch]"), glob("$src/backends/*.h"));
s{^\Q$src/\E}{} for @files;
for my $f (@files) {
  # One line of prose: comment leaders and Markdown marks out, blanks folded.
  (my $t = slurp($f)) =~ s{^\s*(?:/?\*+/?|//|#+)[ \t]?}{}mg;
  $t =~ s/[`"]//g; $t =~ s/\s+/ /g;
  # "its 14 operations", "the 15 buffer operations": the count of the table.
  while ($t =~ /\b(\d+|\w+teen|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)\s+(?:buffer\s+)?operations\b/gi) {
    my ($n, $said) = ($1, $&); my ($i) = grep { $numbers[$_] eq lc $n } 0..$#numbers; $n = $i if defined $i;
    next unless $n =~ /^\d+$/ && $n >= 2;
    check($n == $nops, "$f: \"$said\": hdal_backend_buffer_ops has $nops");
  }
  # A list of backend names that starts as the known order does names them all,
  # in order ("cpu, cuda and opencl" names a few on purpose).
  my $first = join(", ", @known[0, 1]);
  while ($t =~ /\b\Q$first\E((?:, (?:or )?\w+)*)( and)?/g) {
    my ($rest, $and) = ($1, $2);
    next if $and;
    my @got = ($known[0], $known[1], $rest =~ /, (?:or )?(\w+)/g);
    my $want = join(",", @known); my $have = join(",", grep { my $g = $_; grep { $_ eq $g } @known } @got);
    check($have eq $want, "$f: backends listed as \"$known[0], $known[1]$rest\": expected @known in that order");
  }
}
# The summaries name every backend: the package description and the main page.
my ($desc) = slurp("hdal.pc.in") =~ /^Description:(.*)$/m;
my ($main) = slurp("include/hdal.h") =~ /\@mainpage(.*?)\*\//s;
for my $b (@known) {
  my $w = $word{$b} // $b;
  for (["hdal.pc.in Description", $desc // ""], ["include/hdal.h \@mainpage", ($main // "") =~ s/\s*\*\s*/ /gr]) {
    next if $b eq "cpu" && $_->[1] =~ /hwloc/; # the CPU backend is hwloc'\''s
    check(scalar($_->[1] =~ /\Q$w\E/), "$_->[0] does not name the $w backend");
  }
}
# docs/design.md'"'"'s layer diagram (its first code block) names every file of lib/.
my ($diagram) = slurp("docs/design.md") =~ /^```\n(.*?)^```$/ms;
for my $c (map { s{^.*/}{}r } glob("$src/lib/*.c")) {
  check(scalar(($diagram // "") =~ /\b\Q$c\E\b/), "docs/design.md: the layer diagram does not name lib/$c");
}
print "docs-drift: $passes checks passed, $fails failed (backends: @known; $nops buffer operations)\n";
exit($fails ? 1 : 0);
' "$src"
