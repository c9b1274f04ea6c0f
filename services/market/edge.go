package market

// EdgeCandle is the candle as the WebSocket channel carries it: the REST candle plus its identity and
// the last fill that moved it.
type EdgeCandle struct {
	Symbol     string `json:"symbol"`
	Resolution string `json:"resolution"`
	Candle
	LastTradeTs      *int64  `json:"lastTradeTs"`
	LastFillRecordID *string `json:"lastFillRecordId"`
}

// EdgeTrade is the filtered fill sent with a candle change; amounts are numbers in display units.
type EdgeTrade struct {
	Ts                     int64   `json:"ts"`
	Slot                   int64   `json:"slot"`
	TxSig                  string  `json:"txSig"`
	Action                 string  `json:"action"`
	ActionExplanation      string  `json:"actionExplanation"`
	MarketType             string  `json:"marketType"`
	MarketIndex            int     `json:"marketIndex"`
	Symbol                 string  `json:"symbol"`
	FillRecordID           string  `json:"fillRecordId"`
	Taker                  string  `json:"taker"`
	TakerOrderID           string  `json:"takerOrderId"`
	TakerOrderDirection    string  `json:"takerOrderDirection"`
	Maker                  string  `json:"maker"`
	MakerOrderID           string  `json:"makerOrderId"`
	MakerOrderDirection    string  `json:"makerOrderDirection"`
	BaseAssetAmountFilled  float64 `json:"baseAssetAmountFilled"`
	QuoteAssetAmountFilled float64 `json:"quoteAssetAmountFilled"`
	OraclePrice            float64 `json:"oraclePrice"`
	TakerFee               float64 `json:"takerFee"`
	MakerFee               float64 `json:"makerFee"`
}

// EdgeCandleMessage is the value of an edge.candles message (key: symbol). Type is "create" for a
// bucket's first trade and "update" after; Trades are the fills of this commit that changed it.
type EdgeCandleMessage struct {
	Type       string      `json:"type"`
	Symbol     string      `json:"symbol"`
	Resolution string      `json:"resolution"`
	Candle     EdgeCandle  `json:"candle"`
	Trades     []EdgeTrade `json:"trades"`
}
