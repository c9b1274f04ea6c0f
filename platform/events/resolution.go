package events

import "fmt"

// Resolution is a candle width as the API and the WebSocket protocol name it: minutes (1, 5, 15, 60,
// 240) or D, W, M. The market service builds candles at each; the edge accepts subscriptions to
// them. Declared here so that both read the one list.
type Resolution string

// Resolutions lists every resolution, in ascending width.
func Resolutions() []Resolution {
	return []Resolution{"1", "5", "15", "60", "240", "D", "W", "M"}
}

// ParseResolution accepts exactly the API's path values.
func ParseResolution(s string) (Resolution, error) {
	for _, r := range Resolutions() {
		if string(r) == s {
			return r, nil
		}
	}
	return "", fmt.Errorf("resolution must be one of 1, 5, 15, 60, 240, D, W, M")
}
