package view_test

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"sort"
)

// smallPNG re-encodes a screenshot with a palette of its 256 most common
// colours (a page of flat colours loses little) at the best compression, so
// the screenshots committed for the README stay small.
func smallPNG(data []byte) ([]byte, error) {
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	b := img.Bounds()
	counts := map[color.RGBA]int{}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			counts[color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)]++
		}
	}
	common := make([]color.RGBA, 0, len(counts))
	for c := range counts {
		common = append(common, c)
	}
	sort.Slice(common, func(i, j int) bool {
		if counts[common[i]] != counts[common[j]] {
			return counts[common[i]] > counts[common[j]]
		}
		key := func(c color.RGBA) uint32 { return uint32(c.R)<<16 | uint32(c.G)<<8 | uint32(c.B) }
		return key(common[i]) < key(common[j])
	})
	pal := color.Palette{}
	for _, c := range common[:min(256, len(common))] {
		pal = append(pal, c)
	}
	out := image.NewPaletted(b, pal)
	nearest := map[color.RGBA]uint8{}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			c := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)
			i, ok := nearest[c]
			if !ok {
				i = uint8(pal.Index(c))
				nearest[c] = i
			}
			out.SetColorIndex(x, y, i)
		}
	}
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(&buf, out); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
