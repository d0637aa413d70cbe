module workbench/loadgen

go 1.24
