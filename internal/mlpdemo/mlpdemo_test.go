package mlpdemo

import (
	"context"
	"testing"
)

func TestTrainingLearns(t *testing.T) {
	res, err := Run(context.Background(), Config{Steps: 60, Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Steps != 60 {
		t.Fatalf("ran %d steps", res.Steps)
	}
	if !(res.LastLoss < res.FirstLoss*0.8) {
		t.Fatalf("loss did not fall: %.3f -> %.3f", res.FirstLoss, res.LastLoss)
	}
	if res.Accuracy < 50 {
		t.Fatalf("accuracy %.1f%% on a 3-class problem: not learning", res.Accuracy)
	}
}
