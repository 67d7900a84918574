"""The fault matrix: every command family under every fault, through the real `workbench` executable."""
