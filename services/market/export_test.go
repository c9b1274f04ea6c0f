package market

// SetTextBudget bounds the candle JSON h keeps (TextBytes) to n bytes; below 0 it keeps none past
// an answer.
func SetTextBudget(h *Hot, n int64) { h.textBudget = n }
