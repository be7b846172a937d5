// uPlot and its stylesheet, as one chunk the overview loads when it first draws.
import 'uplot/dist/uPlot.min.css'
import uPlot from 'uplot'

export default uPlot
