module workbench/refclient

go 1.24
