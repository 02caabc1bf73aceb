# sandbox/interpreter/ir_kernel.R - R's kernel of the code interpreter (ir-kernel.json runs
# `R -f` on this file). Not `R -e`: R writes an -e expression to a temporary file that it keeps
# open after deleting it, and gVisor (runsc 20221219) cannot save such a file, so a sandbox of
# the template with an r context could not be suspended.
IRkernel::main()
