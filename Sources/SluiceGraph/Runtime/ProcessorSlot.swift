import SluiceAudio

/// Runs one processor on the worker thread: delivers the markers its inputs have reached,
/// offers it the audio waiting and the room free, and moves what it used.
final class ProcessorSlot {
    let name: String
    let node: any ProcessorNode
    let ports: NodePorts
    let inputs: [EdgeReader]
    let outputs: [EdgeWriter]

    init(name: String, node: any ProcessorNode, ports: NodePorts, inputs: [EdgeReader], outputs: [EdgeWriter]) {
        self.name = name
        self.node = node
        self.ports = ports
        self.inputs = inputs
        self.outputs = outputs
    }

    /// One round of markers and audio. Returns whether anything moved.
    func step() -> Bool {
        guard hasMarkerRoom() else { return false }
        var io = ProcessIO(ports)
        var moved = false
        clearOutputViews()
        for port in inputs.indices {
            let input = inputs[port]
            while let marker = input.takeReachedMarker() {
                if case .endOfStream = marker.event { ports.setEnded(port) }
                node.receive(marker, on: port, &io)
                flushMarkers()
                moved = true
                guard hasMarkerRoom() else { return true }
            }
        }
        for port in inputs.indices {
            let input = inputs[port]
            let region = input.readableUnits()
            ports.setInput(port, base: region.base, units: region.units)
        }
        openOutputViews()
        node.process(&io)
        return finishCall() || moved
    }

    /// Asks the node to release what it holds back (the sink ran dry).
    func drain() -> Bool {
        guard hasMarkerRoom() else { return false }
        var io = ProcessIO(ports)
        for port in inputs.indices { ports.setInput(port, base: nil, units: 0) }
        openOutputViews()
        node.drain(&io)
        return finishCall()
    }

    private func hasMarkerRoom() -> Bool {
        for port in outputs.indices where outputs[port].markerRoom() < NodePorts.markerCapacity { return false }
        return true
    }

    private func clearOutputViews() {
        for port in outputs.indices { ports.setOutput(port, base: nil, units: 0) }
    }

    private func openOutputViews() {
        for port in outputs.indices {
            let output = outputs[port]
            let region = output.writableRegion()
            ports.setOutput(port, base: region.base, units: region.units)
        }
    }

    /// Markers go out before the audio they describe, so a reader on another thread never
    /// reads past a marker it has not seen.
    @discardableResult
    private func flushMarkers() -> Bool {
        var any = false
        for port in outputs.indices {
            let output = outputs[port]
            let count = ports.markerCount(output: port)
            guard count > 0 else { continue }
            for index in 0..<count { output.push(ports.marker(index, output: port)) }
            ports.removeMarkers(output: port)
            output.wakeReader()
            any = true
        }
        return any
    }

    private func finishCall() -> Bool {
        var moved = flushMarkers()
        for port in inputs.indices {
            let input = inputs[port]
            let consumed = ports.consumed(input: port)
            if consumed > 0 {
                input.release(consumed)
                moved = true
            }
        }
        for port in outputs.indices {
            let output = outputs[port]
            let produced = ports.produced(output: port)
            if produced > 0 {
                output.commit(produced)
                output.wakeReader()
                moved = true
            }
        }
        return moved
    }
}
