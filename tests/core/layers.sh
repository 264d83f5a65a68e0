#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# docs/design.md's layer diagram against the code: every call from one file
# of lib/ to another (nm of the library's objects in this build tree) goes to
# the file's own layer or one below it, in the diagram's order, and the
# diagram names every file (docs-drift.sh checks that on the sources).
# Usage: layers.sh (from make check: top_srcdir, top_builddir).
set -u
src=${top_srcdir:-..} build=${top_builddir:-..}
command -v perl >/dev/null || { echo "perl not found"; exit 77; }
command -v nm >/dev/null || { echo "nm not found"; exit 77; }
set -- "$build"/lib/.libs/libhdal_la-*.o
[ -f "$1" ] || { echo "no objects of libhdal in $build/lib/.libs (a static-only build?)"; exit 77; }
for o in "$@"; do
  f=${o##*/libhdal_la-}
  nm "$o" | awk -v f="${f%.o}" 'NF == 3 && $2 ~ /^[TDRB]$/ { print "D", f, $3 } NF == 2 && $1 == "U" { print "U", f, $2 }'
done | exec perl -e '
use strict; use warnings;
my $src = shift;
open(my $h, "<", "$src/docs/design.md") or die "$src/docs/design.md: $!";
my ($diagram) = do { local $/; <$h> } =~ /^```\n(.*?)^```$/ms;
# A layer: a line with a name and "lib/"; its files, up to the first line of
# the "│" column or the arrow; the files "beneath all" are the lowest layer.
my (%layer, @names, $n);
for (split /\n/, $diagram // "") {
  if (/^\s{2}(\w[\w ]*?)\s{2,}lib\//) { push @names, $1; $n = $#names }
  elsif (/^\s*[│▼]/) { undef $n }
  next unless defined $n;
  my $beneath = /beneath all/;
  for my $c (/(\w+)\.c\b/g) { $layer{$c} = $beneath ? 1e9 : $n }
}
my (%def, @calls);
while (<STDIN>) { my ($k, $f, $s) = split; if ($k eq "D") { $def{$s} = $f } else { push @calls, [$f, $s] } }
my ($ok, $bad) = (0, 0);
my %seen;
for (@calls) {
  my ($f, $s) = @$_; my $g = $def{$s};
  next if !defined $g || $g eq $f || $seen{"$f $g"}++;
  for ([$f, defined $layer{$f}], [$g, defined $layer{$g}]) {
    next if $_->[1];
    print "FAIL: lib/$_->[0].c is in no layer of docs/design.md\x27s diagram\n"; $bad++; $layer{$_->[0]} = -1;
  }
  if ($layer{$g} < $layer{$f}) {
    my $name = sub { $_[0] == 1e9 ? "beneath all" : $names[$_[0]] // "?" };
    printf "FAIL: lib/%s.c (%s) calls %s of lib/%s.c (%s), a layer above it\n", $f, $name->($layer{$f}), $s, $g,
      $name->($layer{$g});
    $bad++;
  } else { $ok++ }
}
print "layers: ", scalar(@names), " layers (@names), $ok calls between files one way, $bad against it\n";
exit($bad || !@names ? 1 : 0);
' "$src"
