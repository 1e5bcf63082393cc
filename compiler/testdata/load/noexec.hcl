tool "plain" { path = "../tools/plain.txt" } # want: noexec.hcl:1:23: tool "plain": tool binary .* is not executable; run chmod \+x
