package energy

import "fmt"

// Words for a device's figures, shared by `study show`, `capacity show` and the receipts.

// EnergyText is the device's energy with its method ("-" without energy).
func (d DeviceFigures) EnergyText() string {
	if d.Method == "" {
		return "-"
	}
	return fmt.Sprintf("%.3f J (%s)", d.EnergyJ, d.Method)
}

// PowerText is the average and peak power ("-" without energy).
func (d DeviceFigures) PowerText() string {
	if d.Method == "" {
		return "-"
	}
	return fmt.Sprintf("%.1f W avg, %.1f W peak", d.AvgW, d.PeakW)
}

// ClockText is the shader clock's range: its first reading, then minimum to maximum ("-": none).
func (d DeviceFigures) ClockText() string {
	if d.ClockStartMHz == 0 && d.ClockMaxMHz == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f MHz at start, %.0f-%.0f", d.ClockStartMHz, d.ClockMinMHz, d.ClockMaxMHz)
}

// TempText is the temperature range ("-": none).
func (d DeviceFigures) TempText() string {
	if d.TempMinC == 0 && d.TempMaxC == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f-%.0f °C", d.TempMinC, d.TempMaxC)
}

// ThrottleText counts the samples with a thermal or hardware slowdown and with the power cap.
func (d DeviceFigures) ThrottleText() string {
	return fmt.Sprintf("%d throttled, %d power-capped", d.Throttled, d.PowerCapped)
}

// TotalText is a leg's or cell's energy over its time ("no energy measured" without).
func (f LegFigures) TotalText(has bool) string {
	if !has {
		return "no energy measured"
	}
	avg := 0.0
	if f.Seconds > 0 {
		avg = f.EnergyJ / f.Seconds
	}
	return fmt.Sprintf("%.3f J over %.3f s (%s), %.1f W avg", f.EnergyJ, f.Seconds, f.Method, avg)
}
