module github.com/devprof/devprof

go 1.26
