import BoardCore
import Testing

/// The backoff a board thread follows while its GPIO chip is gone (BoardRunner): said once per outage, looked
/// for again sooner at first, never less often than the maximum, and a new outage starts from the first wait.
@Suite struct DeviceOutageTests {
    @Test func anOutageIsSaidOnceAndItsLooksBackOffToTheMaximum() {
        var outage = DeviceOutage(first: .milliseconds(250), maximum: .seconds(2))
        #expect(!outage.isDown)
        let first = outage.failed()
        #expect(first.beginsOutage)
        #expect(first.wait == .milliseconds(250))
        #expect(outage.isDown)
        var waits: [Duration] = []
        for _ in 0..<5 {
            let next = outage.failed()
            #expect(!next.beginsOutage)
            waits.append(next.wait)
        }
        #expect(waits == [.milliseconds(500), .seconds(1), .seconds(2), .seconds(2), .seconds(2)])
        #expect(outage.failedLooks == 5)
    }

    @Test func backIsSaidOnlyAfterAnOutageAndTheNextOutageStartsAfresh() {
        var outage = DeviceOutage(first: .milliseconds(100), maximum: .seconds(1))
        let backWhileWorking = outage.recovered()
        #expect(!backWhileWorking)  // working all along: nothing to say
        _ = outage.failed()
        _ = outage.failed()
        let back = outage.recovered()
        #expect(back)
        #expect(!outage.isDown)
        #expect(outage.failedLooks == 0)
        let backAgain = outage.recovered()
        #expect(!backAgain)
        let again = outage.failed()
        #expect(again.beginsOutage)
        #expect(again.wait == .milliseconds(100))
    }
}
