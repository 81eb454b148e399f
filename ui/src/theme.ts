// Naive UI theme overrides. The light theme's stock greens, blues and oranges are too light for
// text on white (WCAG AA asks 4.5:1; axe-core checks it in the e2e test), so text-bearing colors
// are darker here; the dark theme keeps its own colors and gets readable step titles.
import type { GlobalThemeOverrides } from 'naive-ui'

const shades = (base: string, hover: string, pressed: string) => ({ base, hover, pressed })
const green = shades('#0f6b40', '#137a4a', '#0b5232')
const blue = shades('#1958b0', '#1c62c4', '#13448a')
const orange = shades('#8a5200', '#985a00', '#6e4100')
const red = shades('#b01f39', '#c0243f', '#8c1a2e')
const colors = (k: 'primary' | 'info' | 'success' | 'warning' | 'error', s: { base: string; hover: string; pressed: string }) => ({
  [`${k}Color`]: s.base, [`${k}ColorHover`]: s.hover, [`${k}ColorPressed`]: s.pressed, [`${k}ColorSuppl`]: s.hover,
})

export const lightOverrides: GlobalThemeOverrides = {
  common: {
    borderRadius: '6px',
    ...colors('primary', green), ...colors('success', green), ...colors('info', blue), ...colors('warning', orange), ...colors('error', red),
    textColor3: 'rgb(96, 101, 106)',
  },
  // The switch's own text (Logs: pause, follow) is white on its rail.
  Switch: { railColor: 'rgb(112, 112, 112)' },
  // Empty-state text ("No data"): the stock #c2c2c2 on white is 1.8:1; axe asks 4.5:1.
  Empty: { textColor: 'rgb(96, 101, 106)' },
  Steps: { headerTextColorWait: 'rgb(51, 54, 57)', headerTextColorFinish: 'rgb(51, 54, 57)', descriptionTextColorWait: 'rgb(96, 101, 106)', descriptionTextColorFinish: 'rgb(96, 101, 106)' },
}
export const darkOverrides: GlobalThemeOverrides = {
  common: { borderRadius: '6px', textColor3: 'rgba(255, 255, 255, 0.62)' },
  Empty: { textColor: 'rgba(255, 255, 255, 0.62)' },
  Steps: { headerTextColorWait: 'rgba(255, 255, 255, 0.82)', headerTextColorFinish: 'rgba(255, 255, 255, 0.82)', descriptionTextColorWait: 'rgba(255, 255, 255, 0.62)', descriptionTextColorFinish: 'rgba(255, 255, 255, 0.62)' },
}
