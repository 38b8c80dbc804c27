import FoundationEssentials
import Houndify
import JSONKit
import LocalHoundify
import HoundifyAnswers
import SpeakerCommands
import Testing

/// What the clients that only print (`text`, `voice`, `ctl`) make of what only the speaker does (issue #35).
@Suite struct OnlyTheSpeakerTests {
    let book = AnswerBook()

    func response(_ query: String) throws -> HoundServerResponse {
        let json = book.answer(transcript: query, requestInfo: ["TimeZone": "UTC"], voice: false)
        return try HoundServerResponse(json: json, raw: Data(json.asciiJSON().utf8))
    }

    /// `text "set a timer for ten minutes"` once printed "Timers are not supported by this client." as the answer.
    @Test func aCommandOnlyTheSpeakerCarriesOutSaysWhereItLives() throws {
        let reader = ClientCommandReader()
        let timer = try #require(reader.notCarriedOutHere(try response("set a timer for ten minutes"), query: "set a timer for ten minutes"))
        #expect(timer.contains("timers live on the speaker"))
        #expect(timer.contains("hound-speaker ctl text \"set a timer for ten minutes\""))
        #expect(!timer.contains("not supported by this client"))
        #expect(reader.notCarriedOutHere(try response("set an alarm for 7:30 am"), query: "set an alarm for 7:30 am")?.contains("alarms live on the speaker") == true)
        #expect(reader.notCarriedOutHere(try response("set the volume to 30"), query: "set the volume to 30")?.contains("the volume is the speaker's") == true)
        // Plain answers are answers.
        #expect(reader.notCarriedOutHere(try response("what time is it"), query: "what time is it") == nil)
        #expect(reader.notCarriedOutHere(try response("set a timer"), query: "set a timer") == nil, "\"For how long?\" is an answer")
    }

    @Test func ctlTextPrintsTheAnswerAndWhatWasDone() {
        #expect(ControlClient.answerLines(["ok": true, "answer": "It is noon."]) == ["It is noon."])
        #expect(ControlClient.answerLines(["ok": true, "answer": "Good night.", "done": "ran \"lights off\""]) == ["Good night.", "(ran \"lights off\")"])
        #expect(ControlClient.answerLines(["ok": true, "answer": "", "done": "stopped"]) == ["(stopped)"])
    }

    @Test func ctlTimersListsEachTimerAndAlarm() {
        let snapshot: JSONValue = [
            "ok": true,
            "timers": [["id": 1, "name": "pasta", "seconds": 600, "remaining_s": 542, "status": "running"],
                       ["id": 2, "name": "", "seconds": 7200, "remaining_s": 3725, "status": "paused"]],
            "alarms": [["id": 3, "name": "", "time": "7:00 AM", "days": ["Monday", "Friday"], "status": "scheduled"]],
        ]
        #expect(ControlClient.timerLines(snapshot) == [
            "1  timer \"pasta\": 9:02 left of 10 minutes, running",
            "2  timer: 1:02:05 left of 2 hours, paused",
            "3  alarm: 7:00 AM on Monday, Friday, scheduled",
        ])
        #expect(ControlClient.timerLines(["ok": true, "timers": [], "alarms": []]) == ["no timers or alarms"])
    }
}
