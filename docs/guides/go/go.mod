module example.com/launcher-backend

go 1.19
